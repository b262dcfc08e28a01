"""Hosts compose the adapters one deployment uses (store, dispatcher, timer, hook fan-out)
and hand the resulting services to the app factory. `LocalHost` is `agentkit serve`'s."""
