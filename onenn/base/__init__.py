"""The foundation every layer may use, importing no other part of onenn: settings, atomic writes and checked reads,
paths, provenance, the tables' columns, a claim as data. Standard library and numpy only (docs/guide.md)."""
