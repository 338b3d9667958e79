@_exported import HearthEngine
@_exported import HearthFormats
