// Package external holds the operators whose data comes from outside the pipeline
// (docs/operators-reference.md lists them): batches fed with Pipeline.FeedInput,
// godali_pipeline_feed_input or Python's fn.external_source, files named by an input,
// and host functions called back through the C ABI.
package external
