"""One turn: the model loop, its steps, recording, continuing in a new invocation, ending."""
