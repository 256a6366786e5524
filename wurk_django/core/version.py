"""The package version, in one place for setup.cfg, the heartbeat and the banner."""

VERSION = "0.1.0"
