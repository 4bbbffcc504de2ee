"""What happens during a run: operation generators, the clients that perform them, and the
JIRA reproduction scenarios (toggles + workload + fault schedule + the checker that must fire).
"""
