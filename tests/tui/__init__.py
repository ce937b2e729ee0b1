"""Pilot tests of the operator screen."""
