package engine

// DefaultMaxFileBytes is the pipeline's default max_file_bytes: no encoded image of a
// real data set comes near it, and a reader never sizes a buffer from a file's length
// beyond it.
const DefaultMaxFileBytes = 256 << 20
