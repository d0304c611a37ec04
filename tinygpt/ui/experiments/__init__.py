"""The Experiments page (the pitfall lab): its keys and its support."""
