"""The suite replayed on the source and the target: messages, cost, execution, cache, clients."""
