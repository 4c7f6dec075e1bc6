"""Diagnosis: the mechanism table, kernel alignment, attribution, the headline of a regression."""
