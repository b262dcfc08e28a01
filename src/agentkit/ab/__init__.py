"""Live A/B experiments: the fold of samples, the statistics, the monitor and the report.

Enrollment itself happens in the engine when a session is created (`engine.arms`); this
package reads the streams it leaves behind.
"""
