"""The foundation every other layer may use, and which imports no other part of onenn: the settings
dataclasses' base, atomic writes and checked reads, where every output lives, provenance, and the names and
types of the tables' columns. Standard library and numpy only (``tests/test_layers.py``)."""
