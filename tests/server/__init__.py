"""Tests of the server package, mirroring its modules."""
