"""The asyncio server: composition root, connections, the game service and the store."""
