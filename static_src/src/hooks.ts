// Data loading: a resource refetched when its inputs change and on every poll tick.

import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { ApiError } from "./api";
import { usePoll } from "./poll";

export interface Resource<T> {
  data: T | undefined;
  error: ApiError | undefined;
  loading: boolean;
  reload: () => void;
}

/** Load `fetcher()`; again when `key` changes, on each poll tick (if `poll`), and on reload. */
export function useResource<T>(fetcher: () => Promise<T>, key: string, poll = true): Resource<T> {
  const { tick } = usePoll();
  const [state, setState] = useState<{ data?: T; error?: ApiError; key?: string }>({});
  const [nonce, setNonce] = useState(0);
  const latest = useRef(0);
  useEffect(() => {
    const id = ++latest.current;
    fetcher().then(
      (data) => id === latest.current && setState({ data, key }),
      (error) => id === latest.current &&
        setState((s) => ({ data: s.key === key ? s.data : undefined, error, key })),
    );
  }, [key, nonce, poll ? tick : 0]);
  const reload = useCallback(() => setNonce((n) => n + 1), []);
  const fresh = state.key === key;
  return {
    data: fresh ? state.data : undefined,
    error: fresh ? state.error : undefined,
    loading: !fresh,
    reload,
  };
}
