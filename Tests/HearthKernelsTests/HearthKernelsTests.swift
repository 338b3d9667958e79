import Testing
import HearthKernels
