"""The foundation every other layer may use, and which imports no other part of onenn: the settings
dataclasses' base, atomic writes and checked reads, where every output lives, provenance, the names and types
of the tables' columns, and a claim of the paper as data (``claim``). Standard library and numpy only
(``tests/repo/test_layers.py``)."""
