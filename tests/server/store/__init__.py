"""Tests of server.store: schema, migrations, repository and group commit."""
