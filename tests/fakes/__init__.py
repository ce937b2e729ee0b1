"""Fakes of outside services the tests talk to over real sockets (never mocks of our code)."""
