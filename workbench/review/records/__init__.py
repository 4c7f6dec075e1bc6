"""Run records and their integrity: locked tags, kernel results, consistency, re-mapping."""
