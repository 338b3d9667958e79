import Testing
import HearthFormats
