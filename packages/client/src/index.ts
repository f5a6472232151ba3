export {
  type CallOptions,
  type FetchLike,
  type NewPlant,
  type Plant,
  type PlantId,
  PlantStoreClient,
  type PlantStoreClientOptions,
  type RetryOptions,
} from './plant-store-client.js';
export { type ErrorBody, PlantStoreError, type PlantStoreErrorCode } from './plant-store-error.js';
