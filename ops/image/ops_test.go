package image_test

// Tests of package image that build pipelines link every family in.
import _ "github.com/godali/godali/ops/all"
