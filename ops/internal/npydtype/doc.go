// Package npydtype maps numpy's dtypes (formats/npy) to godali's element types, for
// readers.numpy and decoders.numpy alike.
package npydtype
