"""mT5 in Flax (`mt5`), its sizes (`configs`) and checkpoint import/export (`checkpoints`)."""
