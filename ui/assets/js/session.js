// may reports whether the signed-in session's scope allows scope.
export function may(session, scope) {
  const rank = { read: 1, write: 2, admin: 3 };
  return (rank[session.scope] || 0) >= rank[scope];
}
