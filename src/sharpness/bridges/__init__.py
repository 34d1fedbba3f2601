"""Bridges between the papers: LE-SAM on diagonal networks, SAM/LE-SAM at the edge of stability."""
