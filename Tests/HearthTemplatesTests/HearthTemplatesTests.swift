import Testing
import HearthTemplates
