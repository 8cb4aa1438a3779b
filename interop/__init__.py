"""`make interop`: this service checked beside AutoMem's own application on one FalkorDB server and vector store."""
