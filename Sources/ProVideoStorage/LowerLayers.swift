// The layers below the library are modules of their own, so that the compiler keeps them below
// (Docs/ARCHITECTURE.md); to a program that imports ProVideoStorage they are one API: the
// error and its causes, `OperationControl`, `EngineChoice`, and to the package's tools and
// tests their `package` declarations.
@_exported import ProVideoSystem
@_exported import ProVideoIO
@_exported import ProVideoJournal
@_exported import ProVideoWritePath
