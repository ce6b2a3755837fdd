"""A deal number the server drew is not sent before the game ends (it names every hidden card)."""

from __future__ import annotations

from engine.solver.easy import shipped_easy_deals
from server.live import strings_in
from tests.server.conftest import Running


async def test_a_drawn_deal_is_withheld_until_the_game_ends(server: Running) -> None:
    ivy = await server.player("ivy")
    started = await ivy.request("new_game", level="hard")
    game = started["game"]
    assert started["view"]["deal"] is None
    assert (await ivy.request("games"))["games"][0]["deal"] is None
    again = await server.connect()
    welcome = await again.hello(ivy.token)
    assert welcome["games"][0]["deal"] is None
    assert (await again.request("open_game", game=game))["view"]["deal"] is None
    assert (await ivy.request("resign", game=game))["type"] == "ack"
    deal = (await ivy.request("games"))["games"][0]["deal"]
    assert isinstance(deal, int)
    before_the_end = [f for f in ivy.frames + again.frames if f.get("type") != "games"]
    seen = [f for f in before_the_end if str(deal) in map(str, strings_in(f))]
    assert all(f.get("type") == "events" for f in seen)  # only the game_lost event names it


async def test_a_chosen_deal_is_the_players_to_know(server: Running) -> None:
    jon = await server.player("jon")
    started = await jon.request("new_game", level="classic", deal=77)
    assert started["view"]["deal"] == 77
    assert (await jon.request("games"))["games"][0]["deal"] == 77


async def test_easy_deals_are_not_drawn_from_the_shipped_list(server: Running) -> None:
    kim = await server.player("kim")
    shipped = set(shipped_easy_deals())
    for _ in range(3):
        started = await kim.request("new_game", level="easy")
        assert started["view"]["deal"] is None
        assert (await kim.request("resign", game=started["game"]))["type"] == "ack"
    dealt = {g["deal"] for g in (await kim.request("games"))["games"]}
    assert len(dealt) == 3 and not dealt & shipped


async def test_another_players_game_is_not_found_and_not_loaded(server: Running) -> None:
    owner = await server.player("lou")
    game = (await owner.request("new_game", level="hard", deal=3))["game"]
    service = server.server.service
    assert service is not None
    service._forget(service.cached(game))  # type: ignore[arg-type]  # as after a restart
    other = await server.player("max")
    for request in ("open_game", "replay", "close_game"):
        refused = await other.request(request, game=game)
        missing = await other.request(request, game=game + 1)
        assert refused["code"] == missing["code"] == "not_found"
        assert refused["message"].replace(str(game), "N") == missing["message"].replace(
            str(game + 1), "N"
        )
    assert service.cached(game) is None  # answering did not load it
