// Package external holds the operators whose data comes from outside the pipeline:
// external_source (batches fed with Pipeline.FeedInput, godali_pipeline_feed_input or
// Python's fn.external_source) and io.file.read (reads the files named by its input).
package external
