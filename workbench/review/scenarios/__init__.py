"""Practice scenarios: a baseline and a candidate run with one injected regression each."""
