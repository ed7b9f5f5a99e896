"""The picture of a diagnosis' symptom: spec (what to draw, from the typed results), draw (a PNG with matplotlib,
imported only by the worker that draws), sparkline (the text fallback the answer keeps)."""
