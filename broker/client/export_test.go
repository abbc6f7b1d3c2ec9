package client

// RangeAssign is the range assignor, for tests.
var RangeAssign = rangeAssign
