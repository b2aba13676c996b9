"""What drives a turn: the native runtime (a model and our tools); each implements core.runtime.Runtime."""
