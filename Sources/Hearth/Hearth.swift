@_exported import HearthEngine
@_exported import HearthFormats
@_exported import HearthTokenizers
