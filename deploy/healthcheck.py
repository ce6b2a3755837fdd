"""The container image's health check (the Dockerfile's HEALTHCHECK): is the node up?

It asks ``/healthz`` where the image's server listens, as the SCORPION_* variables
that configure the image say: ``SCORPION_PORT`` (8765), ``SCORPION_HOST`` (the
wildcards ``0.0.0.0`` and ``::`` are asked on their loopback address, any other
address as it is) and ``https://`` when ``SCORPION_CERTFILE`` is set, its
certificate not checked: the check asks whether the node is up, not who it is.
Settings given as flags instead (``--certfile`` in the command) are not seen here:
give them as variables. Exit status 0 when the node answers 200, else 1.
"""

from __future__ import annotations

import ipaddress
import os
import ssl
import sys
import urllib.request

WILDCARDS = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}


def probe_url() -> str:
    host = os.environ.get("SCORPION_HOST", "").strip()
    host = WILDCARDS.get(host, host)
    try:
        if ipaddress.ip_address(host).version == 6:
            host = f"[{host}]"
    except ValueError:  # a name, asked as it is
        pass
    scheme = "https" if os.environ.get("SCORPION_CERTFILE") else "http"
    return f"{scheme}://{host}:{os.environ.get('SCORPION_PORT') or '8765'}/healthz"


def main() -> int:
    url = probe_url()
    context = ssl._create_unverified_context() if url.startswith("https") else None
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as answer:
            return 0 if answer.status == 200 else 1
    except Exception as exc:  # refused, timed out, not HTTP, an address it cannot ask
        print(f"{url}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
