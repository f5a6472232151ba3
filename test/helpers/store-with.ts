import type { Store } from '../../src/store/store.js';

/**
 * The real store with the members of `own` put in front of it (a gate, a
 * counter, a fault): every other member is the real store's own, called on
 * the real store.
 */
export function storeWith<Own extends object>(store: Store, own: Own): Store & Own {
  return new Proxy(own, {
    get(target, key) {
      if (key in target) return target[key as keyof Own];
      const value = store[key as keyof Store];
      return typeof value === 'function' ? value.bind(store) : value;
    },
  }) as unknown as Store & Own;
}
