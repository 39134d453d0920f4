// Package coco parses COCO instance annotation files (the "images", "annotations" and
// "categories" arrays of instances_*.json) and turns them into per-image samples the
// way DALI's COCO reader does, without the engine.
//
// Samples follow DALI's readers.coco: images ordered by id (or in the order of an
// explicit list of file names), boxes as [x, y, w, h] or [l, t, r, b] in pixels or
// relative to the image size, annotations smaller than a size threshold dropped,
// crowd annotations optionally dropped, category ids mapped to 1..number of
// categories in increasing id order (0 is left for the background) unless remapping
// is turned off, and polygon segmentations flattened into per-sample polygon and
// vertex tables. Malformed files produce errors wrapping formats.ErrMalformed.
package coco
