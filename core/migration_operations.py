"""Migration operations of our own, in an importable module (a migration's file name starts with digits, so a
squashed migration could not import a class defined in one)."""

from __future__ import annotations

from django.db.migrations.operations.base import Operation


class PostgresqlSqlOrOperations(Operation):
    """`operations` for the migration state and, except on PostgreSQL, for the database; on PostgreSQL the SQL
    statements given, which bring the database to the same state."""

    reversible = True

    def __init__(self, operations: list[Operation], forward: list[str], backward: list[str]):
        self.operations, self.forward, self.backward = operations, forward, backward

    def deconstruct(self):
        return self.__class__.__name__, [], {"operations": self.operations, "forward": self.forward,
                                             "backward": self.backward}

    def state_forwards(self, app_label, state):
        for operation in self.operations:
            operation.state_forwards(app_label, state)

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            for statement in self.forward:
                schema_editor.execute(statement)
            return
        for operation, before, after in self._steps(app_label, from_state):
            operation.database_forwards(app_label, schema_editor, before, after)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            for statement in self.backward:
                schema_editor.execute(statement)
            return
        for operation, before, after in reversed(self._steps(app_label, to_state)):
            operation.database_backwards(app_label, schema_editor, after, before)

    def _steps(self, app_label, state) -> list[tuple[Operation, object, object]]:
        """Each operation with the states before and after it, from `state` (before the first)."""
        steps = []
        for operation in self.operations:
            after = state.clone()
            operation.state_forwards(app_label, after)
            steps.append((operation, state, after))
            state = after
        return steps

    def describe(self):
        return "On PostgreSQL by SQL, else: " + "; ".join(operation.describe() for operation in self.operations)
