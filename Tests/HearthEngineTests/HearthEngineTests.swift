import Testing
import HearthEngine
