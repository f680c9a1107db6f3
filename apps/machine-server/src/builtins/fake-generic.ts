/** `rdk:component:generic` and `rdk:service:generic` model `fake`: DoCommand echoes the command. */
import type { JsonObject } from '../json.ts';
import { genericComponentApi, genericServiceApi } from '../resources/apis/generic.ts';
import type { ModelRegistration } from '../resources/model-registry.ts';
import type { Resource } from '../resources/resource.ts';
import { type Api, builtinModel } from '../resources/resource-name.ts';
import { rejectUnknownAttributes } from './attributes.ts';
import { fakeBehaviour, fakeBehaviourKeys, fakeBehaviourSchema } from './fake-behaviour.ts';

function fakeGeneric(api: Api): ModelRegistration {
  return {
    api,
    model: builtinModel('fake'),
    source: 'builtin',
    attributeSchema: { type: 'object', additionalProperties: false, properties: { ...fakeBehaviourSchema } },
    validate(config) {
      rejectUnknownAttributes(config, fakeBehaviourKeys);
      fakeBehaviour(config);
      return { requiredDeps: [], optionalDeps: [] };
    },
    async build({ config, dependencies, signal }) {
      const behaviour = fakeBehaviour(config);
      await behaviour.beforeBuild(signal);
      const resource: Resource = {
        name: config.resourceName,
        async doCommand(command: JsonObject) {
          return { echo: command, dependencies: [...dependencies.all.keys()] };
        },
        close: () => behaviour.onClose(),
      };
      return resource;
    },
  };
}

export const fakeGenericComponentRegistration = fakeGeneric(genericComponentApi);
export const fakeGenericServiceRegistration = fakeGeneric(genericServiceApi);
