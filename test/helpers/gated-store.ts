import type { NewPlant } from '../../src/plants/plant.js';
import type { CreatePlantResult, Store } from '../../src/store/store.js';
import { storeWith } from './store-with.js';

/**
 * A real store whose plant writes can be held at a gate, to see what arrives
 * while a commit is in flight. Everything else goes straight through.
 */
export function gatedStore(store: Store): Store & { hold(): void; release(): void; batches: number[] } {
  let gate: Promise<void> | undefined;
  let open: () => void = () => undefined;
  const batches: number[] = [];
  const gated = {
    batches,
    hold() {
      ({ promise: gate, resolve: open } = Promise.withResolvers<void>());
    },
    release() {
      gate = undefined;
      open();
    },
    async createPlants(plants: readonly NewPlant[]): Promise<CreatePlantResult[]> {
      batches.push(plants.length);
      if (gate !== undefined) await gate;
      return store.createPlants(plants);
    },
  };
  return storeWith(store, gated);
}
