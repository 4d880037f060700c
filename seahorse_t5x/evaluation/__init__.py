"""Meta-evaluation: how well metric scores agree with human labels (statistics, tables, plots)."""
