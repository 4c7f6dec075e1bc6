"""Diagnosis: the mechanism table, kernel alignment, attribution and the headline of a regression."""
