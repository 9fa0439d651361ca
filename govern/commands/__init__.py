"""Click shells for the commands that belong to the core package."""
