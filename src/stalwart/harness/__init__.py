"""What runs inside a trial process: the Core API contexts, the launcher, and cluster info."""
