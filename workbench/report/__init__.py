"""Presentation: the mapping sheet, its exports, charts and review packs."""
