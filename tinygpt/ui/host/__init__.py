"""What the one server process shares between browser sessions: the run store, the manager, readers, the room."""
