"""Gin files installed with the package, found by gin as `seahorse_t5x/gin/...` like T5X's own."""
