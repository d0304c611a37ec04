"""Identity and admission: who is in the room, who may change which run, and what a learner may start."""
