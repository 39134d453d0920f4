package main

// Every operator family registers itself with the engine from its init functions.
import _ "github.com/godali/godali/ops/all"
