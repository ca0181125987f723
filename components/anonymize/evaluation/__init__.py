"""Detection quality on labelled data: loaders for the labelled sets and the scoring."""
