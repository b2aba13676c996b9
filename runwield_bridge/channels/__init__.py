"""The kit a channel author uses (types, contract, streaming, chunking, markup, ...) and one package per platform."""
