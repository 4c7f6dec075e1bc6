"""The join of measured kernels to a mapping: traces as records, matching, expected times, pairs."""
