"""Tests of the package as a host installs it (sdist, wheel, a fresh venv)."""
