"""One migration per schema change, oldest first; each names the release whose schema it makes."""
